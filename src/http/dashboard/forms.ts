import type { Request, Response } from 'express';
import type { SafeHtml } from './html.ts';

/** Every dashboard page is private and changes: never stored by the browser or a proxy. */
export const send = (res: Response, page: SafeHtml, status = 200): void => {
  res.status(status).set('Cache-Control', 'no-store').type('html').send(page.value);
};

/** Only these fields are read from a form; a repeated field arrives as an array. */
export const field = (req: Request, name: string): string => {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
};
export const fieldList = (req: Request, name: string): string[] => {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return Array.isArray(value)
    ? value.filter((v): v is string => typeof v === 'string')
    : typeof value === 'string'
      ? [value]
      : [];
};
