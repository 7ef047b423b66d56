/**
 * MONGODB_URL checks that need no driver (config.ts runs them at start): the scheme, and the
 * database name the environments' databases are named after. Messages never contain the URL,
 * which may hold a password.
 */

/** The database name used when MONGODB_URL names none. */
export const DEFAULT_DATABASE = 'vouchers';

const DATABASE_RE = /^[A-Za-z0-9_-]{1,48}$/;

/** Throws unless `url` is a mongodb:// or mongodb+srv:// connection string. */
export const assertMongoUrl = (url: string): void => {
  if (!/^mongodb(\+srv)?:\/\/./.test(url)) {
    throw new Error('MONGODB_URL must be a mongodb:// or mongodb+srv:// connection string');
  }
};

/**
 * The base database name: the path of MONGODB_URL (`mongodb://host/<name>?...`), or
 * DEFAULT_DATABASE. Each environment gets `<name>_sandbox` and `<name>_production`.
 */
export const databaseBaseName = (url: string): string => {
  const match = /^mongodb(?:\+srv)?:\/\/[^/]*\/([^?]*)/.exec(url);
  let name = DEFAULT_DATABASE;
  try {
    if (match?.[1]) name = decodeURIComponent(match[1]);
  } catch {
    name = match![1]!;
  }
  if (!DATABASE_RE.test(name)) {
    throw new Error(
      `MONGODB_URL: the database name must match ${DATABASE_RE} (it gets _sandbox or _production appended)`,
    );
  }
  return name;
};
