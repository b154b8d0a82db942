// @ts-check
/**
 * The origin's own ceiling: autocannon (in this, the driver's, process) asks
 * for product pages in a round robin over all SKUs, as fast as the origin
 * answers, for a fixed time. The origin's CPU over the run, read from /proc,
 * gives its cost per request independently of the load generator.
 */
import autocannon from 'autocannon';
import { treeCpuMs } from './proc.js';

/**
 * @param {{ origin: string, originPid: number, products: number, connections: number, seconds: number }} options
 */
export async function measureCeiling({ origin, originPid, products, connections, seconds }) {
  let next = 0;
  const cpuBefore = treeCpuMs(originPid);
  const result = await autocannon({
    url: origin,
    connections,
    duration: seconds,
    requests: [{
      method: 'GET',
      setupRequest: (request) => {
        next = next % products + 1;
        return { ...request, path: `/st/product.asp?SKUSetID=${next}` };
      },
    }],
  });
  const originCpuMs = treeCpuMs(originPid) - cpuBefore;
  const total = result.requests.total;
  return {
    connections,
    seconds,
    requestsPerSecond: Math.round(result.requests.average),
    megabytesPerSecond: Math.round((result.throughput.average / 1e6) * 10) / 10,
    latencyP50Ms: result.latency.p50,
    latencyP99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    originCpuMsPerRequest: total > 0 ? Math.round((originCpuMs / total) * 1000) / 1000 : null,
  };
}
