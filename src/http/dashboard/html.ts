/**
 * HTML by template literal, escaped by default: every value interpolated into `html\`…\`` is
 * escaped unless it is itself the result of `html` (a fragment built the same way). Arrays are
 * joined, `undefined`, `null` and `false` render nothing. There is no way to interpolate raw text.
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
  '`': '&#96;',
};

export const escapeHtml = (value: string): string => value.replace(/[&<>"'`]/g, (c) => ENTITIES[c]!);

type Part = SafeHtml | string | number | boolean | null | undefined | readonly Part[];

const render = (part: Part): string => {
  if (part === null || part === undefined || part === false) return '';
  if (part instanceof SafeHtml) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  return escapeHtml(String(part));
};

export const html = (strings: TemplateStringsArray, ...values: Part[]): SafeHtml =>
  new SafeHtml(strings.reduce((out, s, i) => out + s + (i < values.length ? render(values[i]) : ''), ''));
