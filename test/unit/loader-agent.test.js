// @ts-check
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the HTTP loader loads only undici\'s dispatcher', () => {
  it('its Agent is undici\'s, from lib/dispatcher/agent.js, and undici\'s entry (fetch, WebSocket...) is not loaded', () => {
    // A process of its own: the test runner may have loaded undici already.
    const script = `
      const { createRequire } = await import('node:module');
      const { Agent } = await import('./lib/fetch/http.js');
      const require = createRequire(process.cwd() + '/');
      const loaded = Object.keys(require.cache).filter((file) => file.includes('/node_modules/undici/'));
      const entry = loaded.some((file) => file.endsWith('/node_modules/undici/index.js'));
      const same = Agent === require('undici').Agent;
      console.log(JSON.stringify({ entry, same, agent: loaded.some((file) => file.endsWith('/lib/dispatcher/agent.js')) }));
    `;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ entry: false, same: true, agent: true });
  });
});
