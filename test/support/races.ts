import sinon from 'sinon';
import { WrongExpectedRevisionError, type EventStore, type StreamAppend } from '../../src/core/eventStore.ts';

/**
 * Every append to `events` fails as if another process had written the stream first (until
 * `sinon.restore()`): the command handler retries a bounded number of times, then answers 409
 * CONCURRENT_MODIFICATION. Returns the two stubs, to count the attempts.
 */
export const loseEveryRace = (events: EventStore) => {
  const conflict = (appends: StreamAppend[]) =>
    Promise.reject(new WrongExpectedRevisionError(appends[0]!.streamId, appends[0]!.expectedRevision ?? 'any', 1_000));
  return {
    single: sinon
      .stub(events, 'appendToStream')
      .callsFake((streamId, appended, options) =>
        conflict([{ streamId, events: appended, expectedRevision: options?.expectedRevision }]),
      ),
    multi: sinon.stub(events, 'appendToStreams').callsFake(conflict),
  };
};
