/** Which addresses count as this machine only: the rule every server and the inspector share. */
import { isIP } from 'node:net';

/**
 * True only for literal loopback: `localhost`, an IPv4 address in 127.0.0.0/8, `::1` and
 * IPv4-mapped loopback. A name under `.localhost` (`evil.localhost`) is not: it goes through the
 * resolver, which may send it anywhere.
 */
export function isLoopbackHost(hostname: string): boolean {
  if (typeof hostname !== 'string') return false;
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  if (isIP(host) === 6) return host === '::1' || /^(0:){7}1$/.test(host) || /^::ffff:127\./.test(host) || /^::ffff:7f[0-9a-f]{2}:/.test(host);
  return false;
}
