/**
 * ThreadGroups' start (src/infrastructure/projector/threadGroups.ts): a start that meets another
 * connection's lock (SQLITE_BUSY) is tried again and the groups run; any other error, or a lock
 * that outlasts START_ATTEMPTS, fails the start at once.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import sinon from 'sinon';
import { publishedBuffer } from '../../src/infrastructure/projector/publishedGroup.ts';
import { START_ATTEMPTS, ThreadGroups } from '../../src/infrastructure/projector/threadGroups.ts';
import { SqliteReadStore } from '../../src/infrastructure/readStore/sqliteReadStore.ts';
import { CORE_GROUP, PROJECTION_GROUPS } from '../../src/projections/index.ts';
import { tempFileEach } from '../support/tempFiles.ts';

describe('ThreadGroups start', () => {
  const eventsFile = tempFileEach('thread-groups-', 'events.db');
  const logger = { error: sinon.spy(), warn: sinon.spy() };
  let clock: sinon.SinonFakeTimers | undefined;

  afterEach(() => {
    clock?.restore();
    clock = undefined;
    sinon.restore();
    logger.error.resetHistory();
    logger.warn.resetHistory();
  });

  const options = () => ({
    eventsFile: eventsFile(),
    readsFile: path.join(path.dirname(eventsFile()), 'read.db'),
    groups: [CORE_GROUP.name],
    pollIntervalMs: 50,
    published: publishedBuffer(1),
  });
  const busy = () => new Database.SqliteError('database is locked', 'SQLITE_BUSY_SNAPSHOT');

  it('tries a start that met a lock again, and runs the groups', async () => {
    const open = sinon.stub(SqliteReadStore, 'open').callThrough();
    open.onFirstCall().throws(busy());
    open.onSecondCall().throws(busy());
    const groups = await ThreadGroups.start(options(), PROJECTION_GROUPS, logger, () => {});
    try {
      expect(open.callCount).to.equal(3);
      expect(logger.warn.callCount).to.equal(2);
      expect(groups.checkpoints()).to.deep.equal({ [CORE_GROUP.name]: 0 });
    } finally {
      await groups.stop();
    }
  });

  it('fails at once on an error that is not a lock', async () => {
    const open = sinon.stub(SqliteReadStore, 'open').throws(new Database.SqliteError('disk I/O error', 'SQLITE_IOERR'));
    const outcome = await ThreadGroups.start(options(), PROJECTION_GROUPS, logger, () => {}).then(
      () => 'started',
      (error: Error) => error.message,
    );
    expect(outcome).to.equal('disk I/O error');
    expect(open.callCount).to.equal(1);
  });

  it(`gives up after ${START_ATTEMPTS} attempts when the lock stays`, async () => {
    clock = sinon.useFakeTimers({ toFake: ['setTimeout'] });
    const open = sinon.stub(SqliteReadStore, 'open').throws(busy());
    const started = ThreadGroups.start(options(), PROJECTION_GROUPS, logger, () => {});
    const outcome = started.then(
      () => 'started',
      (error: Error) => error.message,
    );
    await clock.tickAsync(10_000);
    expect(await outcome).to.equal('database is locked');
    expect(open.callCount).to.equal(START_ATTEMPTS);
  });
});
