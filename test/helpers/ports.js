// @ts-check
import net from 'node:net';

/** A port of 127.0.0.1 that was free a moment ago: for a server to start on, or for a client to find nobody at. */
export async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(undefined)));
  const { port } = /** @type {net.AddressInfo} */ (server.address());
  await new Promise((resolve) => server.close(resolve));
  return port;
}
