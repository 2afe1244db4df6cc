/** A test server's answer of `bytes` (default 32 MB, more than the sockets' buffers hold): it finishes only if it is read, and stops once the response is destroyed. */
import type { ServerResponse } from 'node:http';

export function writeBig(res: ServerResponse, bytes = 32 * 1024 * 1024): void {
  const piece = Buffer.alloc(64 * 1024, 0x61);
  let sent = 0;
  const more = (): void => {
    while (sent < bytes && !res.destroyed) {
      sent += piece.length;
      if (!res.write(piece)) return void res.once('drain', more);
    }
    res.end();
  };
  more();
}
