// @ts-check
import { describe, expect, it } from 'vitest';
import { localise, shellBlocks } from '../helpers/doc-examples.js';

/** How test/doc-examples.test.js reads the docs' shell examples, on small pages. */

const PAGE = [
  '# A page',
  '```sh',
  '# a comment',
  'npx prerender crawl http://shop.example/st/dir.asp -o out \\',
  '    --placeholders ssi',
  'npm install -D prerender-static',
  'echo http://shop.example/st/product.asp?SKUSetID=3 > changed.txt',
  'prerender verify out   # exit 1: a file was edited',
  'prerender serve out --port 8080',
  '```',
  '',
  '<!-- not run: needs ssh access to a server -->',
  '',
  '```sh',
  'prerender deploy out ssh://deploy@web1.example/srv/shop',
  '```',
  '```js',
  'prerender("not shell")',
  '```',
].join('\n');

describe('the shell examples of a page', () => {
  const blocks = shellBlocks('docs/x.md', PAGE);

  it('finds the sh blocks, and the reason a block is not run', () => {
    expect(blocks.map((block) => [block.line, block.notRun])).toEqual([[2, null], [14, 'needs ssh access to a server']]);
  });

  it('runs prerender lines and file-making lines, joins continued lines, and lists the others', () => {
    const [first] = blocks;
    expect(first.commands.map((command) => [command.line, command.text, command.exit, command.longRunning])).toEqual([
      [4, 'npx prerender crawl http://shop.example/st/dir.asp -o out  --placeholders ssi', 0, false],
      [7, 'echo http://shop.example/st/product.asp?SKUSetID=3 > changed.txt', 0, false],
      [8, 'prerender verify out   # exit 1: a file was edited', 1, false],
      [9, 'prerender serve out --port 8080', 0, true],
    ]);
    expect(first.skipped).toEqual(['npm install -D prerender-static']);
  });

  it('takes a here-document whole, up to its terminator', () => {
    const [block] = shellBlocks('docs/y.md', ['```sh', "cat > prices.json <<'EOF'", '{ "SKU-1": { "*": "$1" } }', 'EOF', 'prerender serve out', '```'].join('\n'));
    expect(block.commands.map((command) => command.text)).toEqual([`cat > prices.json <<'EOF'\n{ "SKU-1": { "*": "$1" } }\nEOF`, 'prerender serve out']);
    expect(block.skipped).toEqual([]);
  });

  it('points placeholders at local servers, /srv/ at the temp dir, and serve at a free port', () => {
    const origins = { shop: 'http://127.0.0.1:4000' };
    const [crawl, , , serve] = blocks[0].commands;
    expect(localise(crawl, { dir: '/tmp/d', origins })).toEqual({ script: 'prerender crawl http://127.0.0.1:4000/st/dir.asp -o out  --placeholders ssi', missing: [] });
    expect(localise(serve, { dir: '/tmp/d', origins }).script).toBe('exec prerender serve out --port 0');
    expect(localise({ text: 'prerender publish out --to /srv/shop', line: 1, exit: 0, longRunning: false }, { dir: '/tmp/d', origins }).script)
      .toBe('prerender publish out --to /tmp/d/srv/shop');
  });

  it('names a placeholder with no server, and a host that is no placeholder', () => {
    const command = (/** @type {string} */ text) => ({ text, line: 1, exit: 0, longRunning: false });
    expect(localise(command('prerender crawl http://git.example/gitweb.cgi'), { dir: '/d', origins: {} }).missing).toEqual(['git']);
    expect(localise(command('prerender crawl http://shop/st/dir.asp --frontier redis://:pw@redis.internal:6379/0'), { dir: '/d', origins: {} }).missing)
      .toEqual(['host "shop"', 'host "redis.internal"']);
    expect(localise(command('prerender front out --nginx --origin http://10.0.0.5:8000 --site-url https://static.example/'), { dir: '/d', origins: {} }).missing).toEqual([]);
  });
});
