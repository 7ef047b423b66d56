import ipaddr from 'ipaddr.js';

/**
 * Which addresses a webhook may be delivered to (decisions.md, Webhooks, Targets): every range
 * that is not public unicast is refused (loopback, private, link-local, carrier-grade NAT,
 * multicast, reserved, unspecified, ...; IPv4-mapped IPv6 addresses are judged as the IPv4 address
 * they carry) unless the operator allows it by CIDR (WEBHOOK_ALLOWED_CIDRS). Pure.
 */
export type Cidr = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** Parses `10.0.0.0/8,::1/128` (an address without a length is a single host); throws on a bad entry. */
export const parseCidrs = (raw: string): Cidr[] =>
  raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      try {
        if (entry.includes('/')) return ipaddr.parseCIDR(entry);
        const address = ipaddr.parse(entry);
        return [address, address.kind() === 'ipv4' ? 32 : 128] as Cidr;
      } catch {
        throw new Error(`"${entry}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
      }
    });

const normalise = (address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 =>
  address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress()
    ? (address as ipaddr.IPv6).toIPv4Address()
    : address;

const inCidr = (address: ipaddr.IPv4 | ipaddr.IPv6, [range, bits]: Cidr): boolean => {
  const a = normalise(address);
  const r = normalise(range);
  if (a.kind() !== r.kind()) return false;
  const length = r !== range ? bits - 96 : bits; // a v4-mapped range: its IPv4 prefix
  return a.match(r, Math.max(0, length));
};

/** Null when the address may be connected to; else the range that refuses it ("private", "loopback", ...). */
export const refusedRange = (literal: string, allowed: readonly Cidr[]): string | null => {
  if (!ipaddr.isValid(literal)) return 'invalid';
  const address = ipaddr.parse(literal);
  if (allowed.some((cidr) => inCidr(address, cidr))) return null;
  const range = normalise(address).range();
  return range === 'unicast' ? null : range;
};

/** Is `host` (a URL's hostname, IPv6 in brackets) an IP address literal? Returns it unbracketed, or null. */
export const addressLiteral = (host: string): string | null => {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : null;
};
