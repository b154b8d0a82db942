// @ts-check
/**
 * An ssh ProxyCommand for tests: relays stdin/stdout to 127.0.0.1:PORT, and
 * either cuts the connection after CUT bytes sent (a network drop in the
 * middle of a transfer) or paces what it sends to RATE bytes a second.
 *   node tcp-relay.js PORT cut=BYTES | rate=BYTES_PER_SECOND
 */
import net from 'node:net';

const [port, mode = 'cut=0'] = process.argv.slice(2);
const [kind, value] = mode.split('=');
const limit = Number(value);
const socket = net.connect(Number(port), '127.0.0.1');
let sent = 0;
const started = Date.now();
socket.pipe(process.stdout);
process.stdin.on('data', (chunk) => {
  sent += chunk.length;
  if (kind === 'cut' && limit > 0 && sent > limit) {
    socket.destroy();
    process.exit(0);
  }
  socket.write(chunk);
  if (kind === 'rate') {
    const due = (sent / limit) * 1000 - (Date.now() - started);
    if (due > 0) {
      process.stdin.pause();
      setTimeout(() => process.stdin.resume(), due);
    }
  }
});
process.stdin.on('end', () => socket.end());
socket.on('close', () => process.exit(0));
socket.on('error', () => process.exit(1));
