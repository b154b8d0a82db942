// @ts-check
/**
 * An ssh ProxyCommand for tests: relays stdin/stdout to 127.0.0.1:PORT, and
 * either cuts the connection after CUT bytes sent (a network drop in the
 * middle of a transfer), paces what it sends to RATE bytes a second, or
 * holds what it sends after BYTES until FILE exists (a test acts on the
 * server meanwhile; given up after 60 s), or stalls after BYTES: nothing
 * moves either way, its pid goes to FILE, and it stays alive for 60 s even
 * once its stdin is closed and ssh sent it SIGHUP (a stuck proxy or bastion).
 *   node tcp-relay.js PORT cut=BYTES | rate=BYTES_PER_SECOND | hold=BYTES:FILE | stall=BYTES:FILE
 */
import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';

const [port, mode = 'cut=0'] = process.argv.slice(2);
const [kind, value] = mode.split('=');
const [limit, holdFile] = [Number(value.split(':')[0]), value.split(':').slice(1).join(':')];
let held = false;
const socket = net.connect(Number(port), '127.0.0.1');
let sent = 0;
const started = Date.now();
socket.pipe(process.stdout);
let stalled = false;
// ssh sends its ProxyCommand SIGHUP when it exits; a stuck proxy (or the child of a wrapper) outlives it.
if (kind === 'stall') process.on('SIGHUP', () => {});
process.stdin.on('data', (chunk) => {
  if (stalled) return;
  sent += chunk.length;
  if (kind === 'stall' && sent > limit) {
    stalled = true;
    socket.unpipe(process.stdout);
    socket.pause();
    writeFileSync(holdFile, String(process.pid));
    setTimeout(() => process.exit(0), 60_000);
    return;
  }
  if (kind === 'cut' && limit > 0 && sent > limit) {
    socket.destroy();
    process.exit(0);
  }
  socket.write(chunk);
  if (kind === 'hold' && !held && sent > limit) {
    held = true;
    process.stdin.pause();
    const since = Date.now();
    const poll = setInterval(() => {
      if (Date.now() - since > 60_000) process.exit(1);
      if (!existsSync(holdFile)) return;
      clearInterval(poll);
      process.stdin.resume();
    }, 20);
  }
  if (kind === 'rate') {
    const due = (sent / limit) * 1000 - (Date.now() - started);
    if (due > 0) {
      process.stdin.pause();
      setTimeout(() => process.stdin.resume(), due);
    }
  }
});
process.stdin.on('end', () => {
  if (!stalled) socket.end();
});
socket.on('close', () => {
  if (!stalled) process.exit(0);
});
socket.on('error', () => process.exit(1));
