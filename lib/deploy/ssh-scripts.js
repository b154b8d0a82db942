// @ts-check
import { CURRENT, LOCK_NAME, RELEASES, TMP_PREFIX, TRASH_PREFIX } from './release.js';
import { TREE_CHECK } from './sound.js';
import { checkHashes, parseHashes } from './verify.js';

/** The sh scripts an ssh target runs on the server, and readers of what they print; arguments are passed quoted, never spliced. @typedef {import('./source.js').FileInfo} FileInfo */

/** For a POSIX shell. @param {string} word */
export const shQuote = (word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

const STATE_BODY = `
cd -- "$1" 2>/dev/null || exit 0
cur=$(readlink ${CURRENT} 2>/dev/null) || cur=
if [ -e ${CURRENT} ] && [ ! -L ${CURRENT} ]; then echo "NOTLINK"; fi
printf 'CURRENT %s\\n' "$cur"
[ -d ${RELEASES} ] || exit 0
for f in ${RELEASES}/*.json; do
  [ -f "$f" ] || continue
  id=\${f#${RELEASES}/}; id=\${id%.json}
  [ -d "${RELEASES}/$id" ] || continue
  printf 'RELEASE '; head -n 1 "$f"
done
id=\${cur##*/}
if [ "$2" = files ] && [ -n "$id" ] && [ -f "${RELEASES}/$id.json" ]; then
  cd ${RELEASES} || exit 1
  ${TREE_CHECK}
  echo RECORD; cat -- "$id.json"
fi`;

/** $1 dir, $2 "files" for the current record too */
export const STATE_SCRIPT = STATE_BODY;

/**
 * $1 dir, $2 "files", $3 our owner text, $4 "take" to take over a stale lock whose owner text is $5; then the state, as
 * STATE_SCRIPT. A lock file of older local runs is read too. On a full disk, failed runs' leftovers are removed under the
 * lock before its owner is written; FULL when it still cannot be.
 */
export const LOCK_STATE_SCRIPT = `
owner_of() { if [ -d "$1" ]; then cat -- "$1/owner"; else cat -- "$1"; fi 2>/dev/null; }
mkdir -p -- "$1" && cd -- "$1" || exit 1
if [ "$4" = take ] && [ -e ${LOCK_NAME} ] && [ "$(owner_of ${LOCK_NAME})" = "$5" ]; then
  # A stale lock: move it aside (only one taker can), then check it was that one.
  if mv -- ${LOCK_NAME} "${LOCK_NAME}.stale.$$" 2>/dev/null; then
    if [ "$(owner_of "${LOCK_NAME}.stale.$$")" = "$5" ]; then rm -rf -- "${LOCK_NAME}.stale.$$"
    else mv -- "${LOCK_NAME}.stale.$$" ${LOCK_NAME} 2>/dev/null || rm -rf -- "${LOCK_NAME}.stale.$$"; fi
  fi
fi
if mkdir -- ${LOCK_NAME} 2>/dev/null; then
  if ! printf '%s\\n' "$3" 2>/dev/null > ${LOCK_NAME}/owner; then
    for d in ${RELEASES}/${TMP_PREFIX}* ${RELEASES}/${TRASH_PREFIX}*; do [ -e "$d" ] && rm -rf -- "$d"; done
    if ! printf '%s\\n' "$3" 2>/dev/null > ${LOCK_NAME}/owner; then rm -rf -- ${LOCK_NAME}; echo FULL; exit 0; fi
  fi
  echo TAKEN
else echo HELD; owner_of ${LOCK_NAME}; echo; echo END; exit 0; fi
${STATE_BODY}`;

export const UNLOCK_SCRIPT = `
cd -- "$1" || exit 0
if [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$2" ]; then rm -rf -- ${LOCK_NAME}; fi`;

/**
 * Hashing on the server. fast_sha256: whether `openssl dgst -sha256 -r` answers in coreutils' format; it uses the CPU's SHA
 * extensions, which Debian 12's sha256sum is built without (BENCHMARKS.md, "The server hashes with openssl").
 * check_sums LIST FAILED: a `sha256sum -c` list checked, failures written as `sha256sum -c --quiet` says them, status 0 only
 * when all match; through openssl unless a name is escaped. all_sums: every file under . hashed in sha256sum's format (or
 * openssl's "HASH *NAME"), then the entries neither file nor directory, NUL-terminated, after LINKS and OTHERS lines.
 */
export const CHECK_SUMS = `
fast_sha256() {
  [ "$(openssl dgst -sha256 -r /dev/null 2>/dev/null)" = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 */dev/null" ] && command -v awk >/dev/null 2>&1
}
check_sums() {
  if fast_sha256 && ! grep -q '^\\\\' "$1"; then
    cut -c67- < "$1" | sed 's|^|./|' | tr '\\n' '\\000' | xargs -0 -r openssl dgst -sha256 -r > "$2.sums" 2>/dev/null || true
    awk 'NR == FNR { want[substr($0, 67)] = substr($0, 1, 64); next }
      substr($0, 65, 4) == " *./" { got[substr($0, 69)] = substr($0, 1, 64) }
      END { bad = 0; for (f in want) { if (!(f in got)) { print f ": FAILED open or read"; bad = 1 } else if (got[f] != want[f]) { print f ": FAILED"; bad = 1 } } exit bad }' "$1" "$2.sums" > "$2"
    s=$?; rm -f -- "$2.sums"; return $s
  fi
  sha256sum -c --quiet --strict < "$1" > "$2" 2>/dev/null
}
all_sums() {
  nl='
'
  if fast_sha256; then
    find . -type f ! -path '*\\\\*' ! -path "*$nl*" -print0 | xargs -0 -r openssl dgst -sha256 -r 2>/dev/null || true
    find . -type f \\( -path '*\\\\*' -o -path "*$nl*" \\) -print0 | xargs -0 -r sha256sum -- || true
  else
    find . -type f -print0 | xargs -0 -r sha256sum -- || true
  fi
  printf '\nLINKS\n'; find . -type l -print0
  printf '\nOTHERS\n'; find . ! -type f ! -type d ! -type l -print0
}`;

/** Release ids (20261124T131500Z-3f2a9c01) as a sh glob. */
const RELEASE_GLOB = '[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]T[0-9][0-9][0-9][0-9][0-9][0-9]Z-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]';

/**
 * $1 dir, $2 id, $3 previous id or "", $4 $5 $6 bytes of the removal list, the check list and the record at the start of stdin,
 * $7 "all" (hash every file, print the sums, do not commit) or "sent", $8 files in the tar stream.
 */
export const STAGE_SCRIPT = `
set -e
${CHECK_SUMS}
mkdir -p -- "$1/${RELEASES}"
cd -- "$1/${RELEASES}"
# A killed run's release: its remote side may still be writing into it for a
# moment, so it is moved aside before it is removed, and one that cannot be
# removed yet is left for the next run.
for d in ./${TMP_PREFIX}*; do
  [ -e "$d" ] || continue
  mv -- "$d" "./${TRASH_PREFIX}$$-\${d#./}" 2>/dev/null || true
done
rm -rf ./${TRASH_PREFIX}* 2>/dev/null || true
for f in *.json; do
  [ -f "$f" ] || continue
  [ -d "\${f%.json}" ] || rm -f -- "$f"
done
# A tree without its record: a prune killed between the two (the record goes
# first). No longer a release; removed, but never the one current points to.
cur=$(readlink ../${CURRENT} 2>/dev/null) || cur=
cur=\${cur%/}
cur=\${cur##*/}
for d in ${RELEASE_GLOB}; do
  if [ -d "$d" ] && [ ! -f "$d.json" ] && [ "$d" != "$cur" ]; then rm -rf -- "$d"; fi
done
if [ -d "$2" ] && [ -f "$2.json" ]; then echo EXISTS; exit 0; fi
rm -rf -- "$2"
t="${TMP_PREFIX}$2"
if [ -n "$3" ] && [ -d "$3" ] && [ ! -L "$3" ]; then
  cp -al -- "$3" "$t"
  # Checked sound with the lock; a link planted since would be copied as one.
  if [ -n "$(find "$t" ! -type f ! -type d -print | head -n 1)" ]; then rm -rf -- "$t"; echo UNSOUND; exit 0; fi
else mkdir -- "$t"; fi
head -c "$4" > "$t.remove"
head -c "$5" > "$t.check"
head -c "$6" > "$t.json"
cd -- "$t"
xargs -0 -r rm -rf -- < "../$t.remove"
if [ "$8" != 0 ]; then tar -x -f - --no-same-owner; fi
echo RECEIVED
if [ "$7" = all ]; then echo SUMS; all_sums; exit 0; fi
if [ "$5" = 0 ] || check_sums "../$t.check" "../$t.failed"; then
  cd ..
  rm -f -- "$t.remove" "$t.check" "$t.failed"
  mv -f -- "$t.json" "$2.json"
  mv -T -- "$t" "$2"
  echo COMMITTED
else
  echo FAILED
  cat -- "../$t.failed"
  cd ..
  rm -rf -- "$t" "$t.remove" "$t.check" "$t.failed" "$t.json"
fi`;

/** $1 dir, $2 id: the release staged with "all" and found sound */
export const COMMIT_SCRIPT = `
set -e
cd -- "$1/${RELEASES}"
rm -f -- "${TMP_PREFIX}$2.remove" "${TMP_PREFIX}$2.check"
mv -f -- "${TMP_PREFIX}$2.json" "$2.json"
mv -T -- "${TMP_PREFIX}$2" "$2"`;

/** $1 dir, $2 id, $3 our lock's owner text (removed at the end) or "", $4… releases to remove */
export const SWITCH_SCRIPT = `
set -e
cd -- "$1"
if [ ! -d "${RELEASES}/$2" ] || [ ! -f "${RELEASES}/$2.json" ]; then echo "no complete release $2 in $1/${RELEASES}" >&2; exit 3; fi
if [ -e ${CURRENT} ] && [ ! -L ${CURRENT} ]; then echo "$1/${CURRENT} is not a symbolic link: move it away" >&2; exit 4; fi
ln -sfn -- "${RELEASES}/$2" ".${CURRENT}.tmp.$2"
mv -T -- ".${CURRENT}.tmp.$2" ${CURRENT}
new=$2
owner=$3
shift 3
for id in "$@"; do
  [ "$id" = "$new" ] && continue
  rm -f -- "${RELEASES}/$id.json"
  rm -rf -- "${RELEASES}/$id"
done
if [ -n "$owner" ] && [ "$(cat ${LOCK_NAME}/owner 2>/dev/null)" = "$owner" ]; then rm -rf -- ${LOCK_NAME}; fi`;

/** A name with a backslash or a newline is escaped, its line starting with "\". @param {string} file @param {string} sha256 */
export function checkLine(file, sha256) {
  if (!/[\\\n]/.test(file)) return `${sha256}  ${file}\n`;
  return `\\${sha256}  ${file.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n`;
}

/** "NAME: FAILED" or "NAME: FAILED open or read"; escaped names start with "\". @param {string} text @returns {{ file: string, reason: string }[]} */
export function parseCheckFailures(text) {
  /** @type {{ file: string, reason: string }[]} */ const failures = [];
  for (const line of text.split('\n')) {
    const match = /^(\\?)(.*): FAILED( open or read)?$/.exec(line);
    if (!match) continue;
    const file = match[1] ? match[2].replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c)) : match[2];
    failures.push({ file, reason: match[3] ? 'missing on the target after transfer' : 'sha256 differs on the target after transfer' });
  }
  return failures.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/** Up to the first that does not start with "./", as find's names all do. @param {string} text @returns {{ names: string[], end: number }} */
function nulEntries(text) {
  /** @type {string[]} */ const names = [];
  let at = 0;
  while (text.startsWith('./', at)) {
    const end = text.indexOf('\0', at);
    if (end === -1) break;
    names.push(text.slice(at + 2, end));
    at = end + 1;
  }
  return { names, end: at };
}

/** The hashes, then the links and other entries neither files nor directories. @param {string} text all_sums's output @param {Map<string, FileInfo>} files */
export function checkAll(text, files) {
  const cut = text.indexOf('\nLINKS\n');
  if (cut === -1) return [{ file: '(release)', reason: `the check did not finish: ${text.slice(-500)}` }];
  const links = nulEntries(text.slice(cut + 7));
  const rest = text.slice(cut + 7 + links.end);
  const others = rest.startsWith('\nOTHERS\n') ? nulEntries(rest.slice(8)).names : [];
  return checkHashes([...files.keys()], files, parseHashes(text.slice(0, cut), true), true, { links: links.names, others });
}

