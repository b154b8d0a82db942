// @ts-check
import { describe, expect, it } from 'vitest';
import { DynamicGroups } from '../../lib/preview/dynamic-groups.js';

/** @param {[string, string][]} links [url, from] @param {string} [path] */
function grouped(links) {
  const groups = new DynamicGroups();
  for (const [url, from] of links) groups.add(new URL(url).pathname, new URL(url), from);
  return groups.list();
}

describe('preview: dynamic targets by path', () => {
  it('gitweb: the path holding most links is split by its routing parameter (a=, not p= nor h=)', () => {
    const links = /** @type {[string, string][]} */ ([]);
    for (let page = 0; page < 4; page++) {
      for (let h = 0; h < 3; h++) links.push([`http://g/gitweb.cgi?p=r.git;a=commit;h=${page}${h}`, `p${page}`]);
      links.push([`http://g/gitweb.cgi?p=r.git;a=snapshot;h=${page};sf=tgz`, `p${page}`]);
      links.push(['http://g/gitweb.cgi', `p${page}`]);
    }
    links.push(['http://g/static/gitweb.css', 'p0']);
    expect(grouped(links)).toEqual([
      { path: '/gitweb.cgi?a=commit', links: 12, pages: 4 },
      { path: '/gitweb.cgi (no a=)', links: 4, pages: 4 },
      { path: '/gitweb.cgi?a=snapshot', links: 4, pages: 4 },
      { path: '/static/gitweb.css', links: 1, pages: 1 },
    ]);
  });

  it('MediaWiki: split by action=, even when title= comes first and most links lack it', () => {
    const links = /** @type {[string, string][]} */ ([]);
    for (const title of ['A', 'B', 'C']) {
      // As on a real page: edit, history and info, and more links without action= (login, permalink, feed, the search form).
      for (const action of ['edit', 'history', 'info']) links.push([`http://w/index.php?title=${title}&action=${action}`, title]);
      for (const other of ['title=Special:UserLogin&returnto=X', `title=${title}&oldid=6${title.charCodeAt(0)}`, 'title=Special:RecentChanges&feed=atom']) links.push([`http://w/index.php?${other}`, title]);
      links.push(['http://w/index.php', title]);
    }
    expect(grouped(links).map((row) => row.path)).toEqual(['/index.php (no action=)', '/index.php?action=edit', '/index.php?action=history', '/index.php?action=info']);
  });

  it('paths that share the links evenly stay whole', () => {
    const links = /** @type {[string, string][]} */ ([['http://s/cart.asp?add=1', 'a'], ['http://s/cart.asp?add=2', 'a'], ['http://s/search.asp?q=x', 'a'], ['http://s/search.asp?q=y', 'b']]);
    expect(grouped(links)).toEqual([{ path: '/cart.asp', links: 2, pages: 1 }, { path: '/search.asp', links: 2, pages: 2 }]);
  });
});
