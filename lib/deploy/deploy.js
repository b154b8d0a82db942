// @ts-check
import { AbortError, DeployError, LockedError, UsageError } from '../errors.js';
import { diffFiles } from './diff.js';
import { Fanout } from './fanout.js';
import { LocalTarget } from './local.js';
import { formatRecord, releaseId, rollbackTarget, toPrune } from './release.js';
import { assertClean, isClean, readSource } from './source.js';
import { SshTarget } from './ssh.js';
import { parseTarget, targetLabel } from './targets.js';

/**
 * Publish and deploy: lock every target, read the tree once (hashing only files written since the last run), give every target
 * the same release (its own hard links and verification; files to send read once and streamed to every ssh target lacking the
 * same ones), then switch `current` on all once all have it, or each when ready with `switch: 'each'`. A failed target keeps its current.
 * @typedef {import('./targets.js').DeployTarget} DeployTarget @typedef {import('./targets.js').TargetConfig} TargetConfig
 * @typedef {import('./diff.js').Churn} Churn
 * @typedef {{ keep?: number, dryRun?: boolean, switch?: 'all' | 'each', signal?: AbortSignal, sshKey?: string, sshOption?: string[],
 *   verify?: 'all' | 'sent', targets?: Record<string, TargetConfig>, cwd?: string, now?: Date,
 *   onTarget?: (result: TargetResult) => void, ssh?: string, tar?: string }} DeployOptions
 *   verify: the check after the transfer hashes the files sent (default) or the whole release; now: the run's time, its release id
 * @typedef {'switched' | 'ready' | 'up-to-date' | 'failed' | 'dry-run'} TargetStatus ready: built and verified, not switched (another target failed)
 * @typedef {{ target: string, kind: 'local' | 'ssh', status: TargetStatus, previous: string | null, current: string | null,
 *   churn: Churn | null, sent: { files: number, bytes: number }, verify: import('./targets.js').VerifyResult | null,
 *   pruned: string[], durationMs: number, error?: { code: string, message: string, detail?: string },
 *   warnings: { code: import('../warnings.js').WarningCode, message: string }[],
 *   plan?: { send: string[], remove: string[] }, reused?: string }} TargetResult
 *   reused: a kept release holding this very tree, switched to instead of a new one
 * @typedef {{ id: string, out: string, dryRun: boolean, pages: number, files: number, bytes: number, sourceMs: number,
 *   sourceHashed: number, targets: TargetResult[], ok: boolean, durationMs: number }} DeployResult sourceHashed: files of OUT read and hashed
 */

/** @param {string[]} names target strings or names @param {DeployOptions} options @returns {DeployTarget[]} */
export function openTargets(names, options = {}) {
  if (names.length === 0) throw new UsageError('give at least one target (a directory, ssh://user@host/path, user@host:path, or a name from the config file\'s "targets")');
  /** @type {Map<string, string>} where each target is -> the name it was given as */
  const seen = new Map();
  return names.map((name) => {
    const configured = options.targets?.[name];
    const spec = parseTarget(configured ? configured.url : name, options.cwd);
    // The same place twice (www and www/, a name and its path) would lock against itself: say what it is.
    const where = targetLabel(spec);
    // A trailing "/" names the same directory, file:// and ssh paths too.
    const key = where.length > 1 ? where.replace(/\/+$/, '') : where;
    const earlier = seen.get(key);
    if (earlier !== undefined) throw new UsageError(`${JSON.stringify(earlier)} and ${JSON.stringify(name)} are the same target (${where}): give it once`);
    seen.set(key, name);
    const label = configured ? `${name} (${targetLabel(spec)})` : targetLabel(spec);
    if (spec.kind === 'local') return new LocalTarget(spec.dir, { name: label, verify: options.verify });
    return new SshTarget(spec, {
      name: label, signal: options.signal, verify: options.verify, ssh: options.ssh,
      sshKey: configured?.sshKey ?? options.sshKey,
      sshOption: [...(configured?.sshOption ?? []), ...(options.sshOption ?? [])],
    });
  });
}

/** @param {unknown} error @returns {{ code: string, message: string, detail?: string }} */ const errorInfo = (error) => {
  const detail = error instanceof DeployError ? error.detail : undefined;
  return {
    code: String(/** @type {{ code?: unknown }} */ (error)?.code ?? 'ERROR'),
    message: String(/** @type {Error} */ (error)?.message ?? error),
    ...(detail ? { detail } : {}),
  };
};

/** An ssh target's messages do not name it: a command about one target gets its label here. @param {DeployTarget} target @param {unknown} error */
const labelled = (target, error) => (target.kind === 'ssh' && error instanceof DeployError
  ? new DeployError(`${target.label}: ${error.message}`, { code: error.code, cause: error, detail: error.detail })
  : error);

/**
 * One deploy's shared state.
 * @typedef {{ options: DeployOptions, keep: number, targets: DeployTarget[], results: TargetResult[], failed: Set<number>,
 *   locked: Set<DeployTarget>, planned: Map<DeployTarget, string[]>, id: string, source: import('./source.js').SourceTree,
 *   header: import('./release.js').ReleaseHeader, record: string }} DeployRun
 *   failed: targets out of the run, their result says why; planned: the releases each drops when it switches
 */

/**
 * Lock all, plan each, send the files once per distinct list, build and check each release, then switch.
 * @param {string} out @param {string[]} names target strings or configured names @param {DeployOptions} [options] @returns {Promise<DeployResult>}
 */
export async function deploy(out, names, options = {}) {
  const started = Date.now();
  const keep = options.keep ?? 5;
  if (!Number.isInteger(keep) || keep < 1) throw new UsageError(`--keep must be a whole number of at least 1, got ${JSON.stringify(options.keep)}`);
  const targets = openTargets(names, options);
  /** @type {Set<DeployTarget>} */ const locked = new Set();
  try {
    // Connections open while OUT is read: ssh's handshake is several round trips.
    for (const target of targets) target.connect?.().catch(() => {}); // a failure is met again, and reported, at the first remote step
    const source = await readSource(out, { cache: true, trustBefore: (options.now ?? new Date()).getTime() - 1000 });
    assertClean(source);
    const id = releaseId(source.manifestSha256, options.now);
    const header = {
      id, createdAt: (options.now ?? new Date()).toISOString(), manifestSha256: source.manifestSha256,
      pages: source.pages, files: source.files.size, bytes: source.bytes,
    };
    /** @type {DeployRun} */ const run = {
      options, keep, targets, locked, id, source, header, record: formatRecord(header, source.files), failed: new Set(), planned: new Map(),
      results: targets.map((target) => ({
        target: target.label, kind: target.kind, status: /** @type {TargetStatus} */ ('failed'), previous: null, current: null,
        churn: null, sent: { files: 0, bytes: 0 }, verify: null, pruned: [], durationMs: 0, warnings: [],
      })),
    };
    if (!options.dryRun) await lockAll(run);
    const plans = await Promise.all(targets.map((target, index) => timed(run, index, () => planTarget(run, index))));
    shareStreams(run, plans);
    await Promise.all(plans.map((plan, index) => plan && timed(run, index, () => stageTarget(run, index, plan))));
    if (options.switch !== 'each' && !options.dryRun && !options.signal?.aborted) await switchAll(run);
    const { results } = run;
    for (const result of results) options.onTarget?.(result);
    return {
      id, out: source.out, dryRun: options.dryRun === true, pages: source.pages, files: source.files.size, bytes: source.bytes,
      sourceMs: source.durationMs, sourceHashed: source.hashed, targets: results,
      ok: results.every((result) => ['switched', 'up-to-date', 'dry-run'].includes(result.status)),
      durationMs: Date.now() - started,
    };
  } finally {
    await Promise.all([...locked].map((target) => target.unlock().catch(() => {})));
    await Promise.all(targets.map((target) => target.close()));
  }
}

/** @param {DeployRun} run @param {number} index @param {unknown} error */
function fail(run, index, error) {
  run.failed.add(index);
  run.results[index].status = 'failed';
  run.results[index].error = errorInfo(error);
}

/** Its time counts, and its error puts the target out of the run. @template T @param {DeployRun} run @param {number} index @param {() => Promise<T>} step @returns {Promise<T | null>} */
async function timed(run, index, step) {
  if (run.failed.has(index)) return null;
  const t0 = Date.now();
  try {
    return await step();
  } catch (error) {
    fail(run, index, error);
    return null;
  } finally {
    run.results[index].durationMs += Date.now() - t0;
  }
}

/**
 * Every lock is taken before anything is built, and after OUT was found sound. A target another run holds refuses the whole run.
 * @param {DeployRun} run
 */
async function lockAll(run) {
  /** @type {unknown[]} */ const busy = [];
  await Promise.all(run.targets.map(async (target, index) => {
    try {
      // Ctrl-C while OUT was read: no target is locked, created or built.
      if (run.options.signal?.aborted) throw new AbortError('interrupted');
      await target.lock();
      run.locked.add(target);
    } catch (error) {
      if (error instanceof LockedError) busy.push(error);
      else fail(run, index, error);
    }
  }));
  if (busy.length > 0) throw busy[0];
}

/**
 * A target's plan to stage, from the manifests; null when nothing is to be built (up to date, a kept release reused, a dry run).
 * @param {DeployRun} run @param {number} index @returns {Promise<import('./targets.js').StagePlan | null>}
 */
async function planTarget(run, index) {
  const { options, id, source, header, record } = run;
  const target = run.targets[index];
  const result = run.results[index];
  const state = await target.state(true);
  const { current, releases } = state;
  // A current release that is not exactly its record is never linked from: built from OUT alone.
  const previousFiles = state.unsound ? null : state.currentFiles;
  if (state.unsound) result.warnings.push({ code: 'DEPLOY_REBUILT', message: `${state.unsound}: the new release is built from OUT alone, not linked from it` });
  result.previous = current;
  result.current = current;
  const previousHeader = releases.find((release) => release.id === current);
  // Removed with the switch: the oldest beyond --keep, counting the new one.
  run.planned.set(target, toPrune([...new Set([...releases.map((release) => release.id), id])], run.keep, [id]));
  const diff = diffFiles(source.files, previousFiles);
  result.churn = diff.churn;
  // publish, rollback, publish of the same tree: the kept release is switched to, nothing is sent.
  const kept = previousHeader?.manifestSha256 === source.manifestSha256 ? undefined : keptRelease(releases, current, header);
  if (kept) {
    result.reused = kept.id;
    run.planned.set(target, toPrune(releases.map((release) => release.id), run.keep, [kept.id]));
  }
  if (options.dryRun) {
    result.status = 'dry-run';
    result.plan = { send: kept ? [] : diff.send, remove: diff.remove };
    return null;
  }
  if (previousHeader && previousHeader.manifestSha256 === source.manifestSha256 && diff.send.length === 0 && diff.remove.length === 0) {
    result.status = 'up-to-date';
    result.verify = { ok: true, checked: 0, failures: [] };
    return null;
  }
  if (kept) {
    result.status = 'ready';
    result.verify = { ok: true, checked: 0, failures: [] };
    if (options.switch === 'each') await switchAndPrune(run, target, result);
    return null;
  }
  return {
    id, source, diff, record, header, signal: options.signal,
    previous: current && previousFiles ? { id: current, files: previousFiles } : null,
  };
}

/** ssh targets lacking the same files, the usual case, share one stream. @param {DeployRun} run @param {(import('./targets.js').StagePlan | null)[]} plans */
function shareStreams(run, plans) {
  /** @type {Map<string, import('./targets.js').StagePlan[]>} */ const groups = new Map();
  plans.forEach((plan, index) => {
    if (!plan || run.targets[index].kind !== 'ssh') return;
    const key = plan.diff.send.join('\0');
    groups.set(key, [...(groups.get(key) ?? []), plan]);
  });
  for (const members of groups.values()) {
    const fanout = new Fanout(run.source.out, members[0].diff.send, members.length, { signal: run.options.signal, tar: run.options.tar });
    for (const plan of members) plan.fanout = fanout;
  }
}

/** With --switch each, switched at once. @param {DeployRun} run @param {number} index @param {import('./targets.js').StagePlan} plan */
async function stageTarget(run, index, plan) {
  const target = run.targets[index];
  const result = run.results[index];
  const staged = await target.stage(plan);
  result.sent = { files: staged.sentFiles, bytes: staged.sentBytes };
  result.verify = staged.verify;
  if (!staged.verify.ok) {
    const first = staged.verify.failures[0];
    throw new DeployError(`the release failed its check on the target: ${staged.verify.failures.length} file(s), first ${first.file}: ${first.reason}`, { code: 'DEPLOY_VERIFY' });
  }
  result.status = 'ready';
  if (run.options.switch === 'each') await switchAndPrune(run, target, result);
}

/** Once every target is ready; a target that fails it keeps its own error. @param {DeployRun} run */
async function switchAll(run) {
  const { results } = run;
  if (!results.every((result) => result.status === 'ready' || result.status === 'up-to-date')) return;
  await Promise.all(run.targets.map(async (target, index) => {
    const result = results[index];
    if (result.status !== 'ready') return;
    const t0 = Date.now();
    try {
      await switchAndPrune(run, target, result);
    } catch (error) {
      if (/** @type {TargetStatus} */ (result.status) !== 'switched') result.status = 'failed';
      result.error = errorInfo(error);
    } finally {
      result.durationMs += Date.now() - t0;
    }
  }));
}

/** @param {DeployRun} run @param {DeployTarget} target @param {TargetResult} result */
async function switchAndPrune(run, target, result) {
  // Ctrl-C after the release was built: it stays ready, current untouched (exit 130 says so), whatever --switch says.
  if (run.options.signal?.aborted) throw new AbortError('interrupted');
  const prune = run.planned.get(target) ?? [];
  const to = result.reused ?? run.id;
  await target.switchTo(to, prune);
  result.status = 'switched';
  result.current = to;
  result.pruned = prune;
}

/**
 * The newest kept release but the current holding the tree about to be published: same manifest hash, file count and bytes.
 * @param {import('./release.js').ReleaseHeader[]} releases @param {string | null} current @param {import('./release.js').ReleaseHeader} header
 */
function keptRelease(releases, current, header) {
  return releases.findLast((release) => release.id !== current && release.manifestSha256 === header.manifestSha256
    && release.files === header.files && release.bytes === header.bytes);
}

/** `deploy` to one local or mounted directory. @param {string} out @param {string} to a directory, or a configured local target's name @param {DeployOptions} [options] */
export async function publish(out, to, options = {}) {
  const [target] = openTargets([to], options);
  await target.close();
  if (target.kind !== 'local') throw new UsageError(`publish --to takes a local directory; for ${to} use "prerender deploy"`);
  return deploy(out, [to], { ...options, switch: 'each' });
}

/** Oldest first. @param {string} to @param {DeployOptions} [options] */
export async function listReleases(to, options = {}) {
  const [target] = openTargets([to], options);
  try {
    const { current, releases } = await target.state();
    return { target: target.label, current, releases };
  } catch (error) {
    throw labelled(target, error);
  } finally {
    await target.close();
  }
}

/** To `release`, or the newest release older than the current one. @param {string} to @param {DeployOptions & { release?: string }} [options] */
export async function rollback(to, options = {}) {
  const [target] = openTargets([to], options);
  let locked = false;
  try {
    await target.lock({ create: false });
    locked = true;
    const { current, releases } = await target.state(true); // true: ssh read it with the lock, in the same round trip
    const id = rollbackTarget(releases.map((release) => release.id), current, options.release);
    await target.switchTo(id);
    return { target: target.label, from: current, to: id };
  } catch (error) {
    throw labelled(target, error);
  } finally {
    if (locked) await target.unlock().catch(() => {});
    await target.close();
  }
}

/** Every file of OUT against its manifest. @param {string} out */
export async function verify(out) {
  const tree = await readSource(out);
  return {
    out: tree.out, ok: isClean(tree), pages: tree.pages, files: tree.checked, bytes: tree.bytes, durationMs: tree.durationMs,
    missing: tree.missing, changed: tree.changed, unlisted: tree.unlisted, unsafe: tree.unsafe,
  };
}
