// @ts-check

/**
 * Deploy targets: what a target string means, and the interface every
 * target kind (local.js, ssh.js) implements.
 *
 * @typedef {import('./source.js').SourceTree} SourceTree
 * @typedef {import('./source.js').FileInfo} FileInfo
 * @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {{ ok: boolean, checked: number, failures: { file: string, reason: string }[] }} VerifyResult
 * @typedef {{
 *   id: string, source: SourceTree, diff: import('./diff.js').Diff, record: string, header: import('./release.js').ReleaseHeader,
 *   previous: { id: string, files: Map<string, FileInfo> } | null, signal?: AbortSignal,
 *   fanout?: import('./fanout.js').Fanout,
 * }} StagePlan
 *   fanout: the shared stream of the files to send (diff.send), for targets that receive one (ssh)
 * @typedef {{ sentFiles: number, sentBytes: number, verify: VerifyResult, reused: boolean }} StageResult
 *   sentFiles/sentBytes: file data that actually travelled (copied, not linked)
 * @typedef {{
 *   label: string, kind: 'local' | 'ssh',
 *   connect?(): Promise<void>, lock(options?: { create?: boolean }): Promise<void>, unlock(): Promise<void>,
 *   state(withFiles?: boolean): Promise<TargetState>,
 *   stage(plan: StagePlan): Promise<StageResult>,
 *   switchTo(id: string, prune?: string[]): Promise<void>,
 *   close(): Promise<void>,
 * }} DeployTarget
 *   lock: one publish, deploy or rollback at a time per target (LockedError
 *   when another holds it; create false: a target that does not exist is not made); state: the releases, and (withFiles) the current release's file list;
 *   switchTo: atomic switch of current, then removal of the `prune` releases
 * @typedef {{ current: string | null, releases: ReleaseInfo[], currentFiles: Map<string, FileInfo> | null, unsound?: string | null }} TargetState
 *   unsound (with currentFiles): why the current release may not be linked
 *   from (it holds a link, a special file, or not its record's files: sound.js)
 * @typedef {import('../options/deploy-keys.js').TargetSpec} TargetSpec
 * @typedef {import('../options/deploy-keys.js').TargetConfig} TargetConfig
 */

export { parseTarget, targetLabel, checkTargetsConfig } from '../options/deploy-keys.js';

