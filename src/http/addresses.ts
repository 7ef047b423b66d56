import type { Request } from 'express';

/**
 * express's `trust proxy` values the service accepts (TRUST_PROXY, config.ts): off, a hop count,
 * or the addresses and subnets of trusted proxies. `true` (trust any hop) is not one of them.
 */
export type TrustProxy = false | number | string[];

/**
 * `http://<address>:<port>` of the listener the request's connection reached: the default base
 * of absolute links when no public base URL is configured. Taken from the socket, never from a
 * header (`Host` and `X-Forwarded-Host` are the client's to write).
 */
export const connectionBaseUrl = (req: Request): string => {
  const { localAddress = '127.0.0.1', localPort } = req.socket;
  const address = localAddress.startsWith('::ffff:') ? localAddress.slice('::ffff:'.length) : localAddress;
  return `http://${address.includes(':') ? `[${address}]` : address}:${localPort}`;
};

/**
 * The base URL to print for a listener on `host:port`: an unspecified address (0.0.0.0, ::)
 * becomes `localhost`, an IPv6 address gets its brackets.
 */
export const listenBaseUrl = (host: string, port: number): string => {
  const name = host === '' || host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
};
