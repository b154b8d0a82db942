// @ts-check

/**
 * What a target string means, and the interface local.js and ssh.js implement.
 * @typedef {import('./source.js').SourceTree} SourceTree @typedef {import('./source.js').FileInfo} FileInfo
 * @typedef {import('./release.js').ReleaseInfo} ReleaseInfo
 * @typedef {{ ok: boolean, checked: number, failures: { file: string, reason: string }[] }} VerifyResult
 * @typedef {{ id: string, source: SourceTree, diff: import('./diff.js').Diff, record: string, header: import('./release.js').ReleaseHeader,
 *   previous: { id: string, files: Map<string, FileInfo> } | null, signal?: AbortSignal, fanout?: import('./fanout.js').Fanout }} StagePlan
 *   fanout: the shared stream of the files to send, for ssh targets
 * @typedef {{ sentFiles: number, sentBytes: number, verify: VerifyResult, reused: boolean }} StageResult sent: copied, not linked
 * @typedef {{ label: string, kind: 'local' | 'ssh', connect?(): Promise<void>, lock(options?: { create?: boolean }): Promise<void>,
 *   unlock(): Promise<void>, state(withFiles?: boolean): Promise<TargetState>, stage(plan: StagePlan): Promise<StageResult>,
 *   switchTo(id: string, prune?: string[]): Promise<void>, close(): Promise<void> }} DeployTarget
 *   lock: one run at a time per target (LockedError), create false: a missing target is not made;
 *   switchTo: atomic switch of current, then the `prune` releases removed
 * @typedef {{ current: string | null, releases: ReleaseInfo[], currentFiles: Map<string, FileInfo> | null, unsound?: string | null }} TargetState
 *   unsound: why the current release may not be linked from (sound.js)
 * @typedef {import('../options/deploy-keys.js').TargetSpec} TargetSpec @typedef {import('../options/deploy-keys.js').TargetConfig} TargetConfig
 */

export { parseTarget, targetLabel, checkTargetsConfig } from '../options/deploy-keys.js';

