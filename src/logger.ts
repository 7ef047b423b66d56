import pino, { type Logger } from 'pino';

/**
 * JSON lines on stdout. Authorization headers and anything named like a key or secret are
 * redacted as a second line of defence: request logging never includes headers at all.
 */
export const createLogger = (level: string, destination?: pino.DestinationStream): Logger =>
  pino(
    {
      level,
      base: { service: 'voucher-service' },
      redact: {
        paths: ['authorization', '*.authorization', 'headers.authorization', 'key', '*.key', 'secret', '*.secret'],
        censor: '[redacted]',
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination,
  );
