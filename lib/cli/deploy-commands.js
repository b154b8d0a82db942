// @ts-check
import { Option } from 'commander';
import path from 'node:path';
import { findConfig, loadConfigFile, CONFIG_FILES } from '../options/config-file.js';
import { explainError, redact } from './report.js';
import { DeployError, UsageError } from '../errors.js';

// Loaded when a deploy command runs: every other command (a crawl above all) starts without them.
const deployModule = () => import('../deploy/deploy.js');
const formatModule = () => import('./deploy-format.js');

/**
 * verify, publish, rollback, releases and deploy over lib/deploy/deploy.js. Exit 1: a mismatch, or a target that failed (its
 * current untouched). @typedef {import('./index.js').Io} Io
 */

const DEPLOY_HELP = `
Targets: a directory or file:///dir (like publish), ssh://user@host[:port]/path
or user@host:path (system ssh; known-hosts checking stays on), or a
name from the config file's "targets".

Each target gets DIR/releases/ID/ (a hard-linked copy of the release
"current" points to, the changed files sent: read once from OUT for all
targets), the files sent hashed on the target against the manifest's sha256
(--verify all: every file), then DIR/current is switched atomically. With
several targets the switch waits until every target has the release and
verified it (--switch each: switch each as soon as it is ready); a target that
fails keeps its current. Files of pages gone leave with the switch. One run at
a time per target: DIR/.prerender-lock. ssh servers need sh, GNU coreutils
and tar.

Exit status: 0 every target switched (or already up to date); 1 the tree does
not match its manifest (nothing sent), or a target failed; 2 usage error, or a
target locked by another run (nothing done); 130 interrupted (current untouched).

Examples:
  prerender deploy out ssh://deploy@web1/var/www/shop ssh://deploy@web2/var/www/shop
  prerender deploy out production --dry-run`;

/** @param {import('commander').Command} program @param {Io} io @param {(code: number) => void} setExitCode */
export function addDeployCommands(program, io, setExitCode) {
  const cwd = () => cwdOf(io);
  const write = (/** @type {string} */ text) => io.stdout.write(text);

  program
    .command('verify')
    .description('re-hash every file the manifest lists (and their .gz/.br siblings); report missing, changed and unlisted files')
    .argument('<out>', 'the tree written by "prerender crawl"')
    .option('--json', 'print the report as one JSON object')
    .addHelpText('after', '\nExit status: 0 the tree matches its manifest; 1 a file is missing, changed, unlisted or unsafe; 2 no readable manifest.')
    .action(async (out, flags) => {
      try {
        const { verify } = await deployModule();
        const report = await verify(path.resolve(cwd(), out));
        write(flags.json ? JSON.stringify(report) + '\n' : (await formatModule()).formatVerify(report));
        setExitCode(report.ok ? 0 : 1);
      } catch (error) {
        setExitCode(failure(io, flags.json, error));
      }
    });

  /**
   * Each failed target's reason on stderr too, where a script's log keeps it.
   * @param {import('../deploy/deploy.js').DeployResult} result @param {Record<string, any>} flags
   */
  const report = async (result, flags) => {
    const format = await formatModule();
    write(flags.json ? JSON.stringify(result) + '\n' : format.formatDeploy(result, { verbose: flags.verbose }));
    for (const t of result.targets) if (t.error) io.stderr.write(`prerender: ${t.target}: ${format.errorLines(t.error, flags.verbose === true)}\n`);
  };
  const verboseOption = () => new Option('--verbose', 'with an error, the few lines ssh and the server said');

  const deployOptions = (/** @type {import('commander').Command} */ command) => command
    .addOption(verboseOption())
    .option('--keep <n>', 'releases kept on each target; the current one is never removed (default: 5)')
    .addOption(new Option('--verify <what>', 'the check after the transfer, on each target: the files sent, or all files of the new release (default: sent)').choices(['sent', 'all']))
    .option('--json', 'print the summary (churn table per target) as one JSON object')
    .addOption(configOption());

  deployOptions(program
    .command('publish')
    .description('publish the tree to a local or mounted web root: DIR/releases/ID/, verified, then DIR/current switched atomically')
    .argument('<out>', 'the tree written by "prerender crawl"')
    .requiredOption('--to <dir>', 'the web root\'s directory (point the server at DIR/current), or a configured target name')
    .addHelpText('after', `
Unchanged files are hard links to the current release (one cp -al), so time
and disk grow with the changed files; only files written since the last run
are hashed. Serve DIR/current (nginx: root DIR/current; disable_symlinks must
stay off). Exit status: 0 switched; 1 the tree does not match its manifest or
the release failed its check (current untouched); 2 usage, or another publish
or deploy holds DIR (DIR/.prerender-lock).`))
    .action(async (out, flags) => {
      try {
        const options = await deployOptionsOf(io, flags);
        const { publish } = await deployModule();
        const result = await publish(path.resolve(cwd(), out), flags.to, options);
        await report(result, flags);
        setExitCode(io.signal?.aborted ? 130 : result.ok ? 0 : 1);
      } catch (error) {
        setExitCode(failure(io, flags.json, error, flags.verbose));
      }
    });

  deployOptions(program
    .command('deploy')
    .description('push the tree to one or more targets (directories, ssh://), each switched atomically')
    .argument('<out>', 'the tree written by "prerender crawl"')
    .argument('<target...>', 'ssh://user@host[:port]/path, user@host:path, file:///dir, a directory, or a configured name')
    .option('--dry-run', 'print what would be sent, removed and switched; change nothing')
    .addOption(new Option('--switch <when>', 'all: switch once every target has the release; each: switch each as soon as it is ready (default: all)').choices(['all', 'each']))
    .option('--ssh-key <file>', 'identity file for ssh targets')
    .option('--ssh-option <option...>', 'extra ssh -o option, "Key=value" (e.g. UserKnownHostsFile=/path); repeatable')
    .addHelpText('after', DEPLOY_HELP))
    .action(async (out, targets, flags) => {
      try {
        const options = await deployOptionsOf(io, flags);
        const { deploy } = await deployModule();
        const result = await deploy(path.resolve(cwd(), out), targets, options);
        await report(result, flags);
        setExitCode(io.signal?.aborted ? 130 : result.ok ? 0 : 1);
      } catch (error) {
        setExitCode(failure(io, flags.json, error, flags.verbose));
      }
    });

  addReleaseCommands(program, io, setExitCode);

  // commander's own usage errors get their { error } object on stdout with --json from the program's outputError.
}

/** A target's releases, listed or switched back to. @param {import('commander').Command} program @param {Io} io @param {(code: number) => void} setExitCode */
function addReleaseCommands(program, io, setExitCode) {
  const write = (/** @type {string} */ text) => io.stdout.write(text);

  onTarget(program
    .command('rollback')
    .description('switch DIR/current back to the previous release (or --release ID)')
    .option('--release <id>', 'the release to switch to (see "prerender releases")'), 'print the result as JSON')
    .action(async (flags) => {
      try {
        const { rollback } = await deployModule();
        const result = await rollback(flags.to, { ...(await deployOptionsOf(io, flags)), release: flags.release });
        write(flags.json ? JSON.stringify(result) + '\n' : `${result.target}: current switched from ${result.from ?? '(none)'} to ${result.to}\n`);
        setExitCode(0);
      } catch (error) {
        setExitCode(failure(io, flags.json, error, flags.verbose));
      }
    });

  onTarget(program
    .command('releases')
    .description('list the releases of a target with their time and page count, and which is current'), 'print the list as JSON')
    .action(async (flags) => {
      try {
        const { listReleases } = await deployModule();
        const list = await listReleases(flags.to, await deployOptionsOf(io, flags));
        write(flags.json ? JSON.stringify(list) + '\n' : (await formatModule()).formatReleases(list));
        setExitCode(0);
      } catch (error) {
        setExitCode(failure(io, flags.json, error, flags.verbose));
      }
    });
}

/** @param {Io} io */
function cwdOf(io) {
  return io.cwd ?? process.cwd();
}

/** Config file keys under the flags; plain paths resolved against cwd. @param {Io} io @param {Record<string, any>} flags */
async function deployOptionsOf(io, flags) {
  const { config, ...cli } = flags;
  const file = await findConfig({ cwd: cwdOf(io), file: config });
  const fromFile = /** @type {Record<string, any>} */ (file ? await loadConfigFile(file) : {});
  /** @type {number | undefined} */ const keep = cli.keep !== undefined ? Number(cli.keep) : fromFile.keep;
  if (cli.keep !== undefined && (!/^\d+$/.test(String(cli.keep)) || Number(keep) < 1)) throw new UsageError(`--keep must be a whole number of at least 1, got ${JSON.stringify(cli.keep)}`);
  const sshKey = cli.sshKey ?? fromFile.sshKey;
  /** @type {import('../deploy/deploy.js').DeployOptions} */ const options = {
    ...cli,
    keep,
    switch: cli.switch ?? fromFile.switch,
    sshKey: sshKey === undefined || sshKey.startsWith('~') ? sshKey : path.resolve(cwdOf(io), sshKey),
    sshOption: [...(fromFile.sshOption ?? []), ...(cli.sshOption ?? [])],
    targets: fromFile.targets,
    cwd: cwdOf(io),
    signal: io.signal,
  };
  return options;
}

/** Where, --json, --verbose, ssh and the config file. @param {import('commander').Command} command @param {string} json what --json prints */
function onTarget(command, json) {
  return command
    .requiredOption('--to <dir>', 'the web root\'s directory, an ssh:// target, or a configured target name')
    .option('--json', json)
    .addOption(verboseOption())
    .option('--ssh-key <file>', 'identity file, for an ssh target')
    .option('--ssh-option <option...>', 'extra ssh -o option, "Key=value", for an ssh target')
    .addOption(configOption());
}

/** --verbose: with an error, ssh's and the server's few lines. */
function verboseOption() {
  return new Option('--verbose', 'with an error, the few lines ssh and the server said');
}

/** @returns {Option} */
function configOption() {
  return new Option('--config <file>', `config file (default: ${CONFIG_FILES.join(', ')} in the current directory, if present)`);
}

/**
 * On stderr, and stdout with --json; returns the exit code.
 * @param {Io} io @param {boolean} json @param {unknown} error @param {boolean} [verbose] with the error's detail lines
 */
function failure(io, json, error, verbose = false) {
  const interrupted = io.signal?.aborted === true;
  const detail = verbose && error instanceof DeployError && error.detail ? `${error.detail.replace(/^/gm, '    ')}\n` : '';
  io.stderr.write(interrupted ? 'prerender: interrupted; current was not switched\n' : `prerender: ${explainError(error)}\n${detail}`);
  // --json: one JSON object on stdout on every path, an interrupt too (a script parses it).
  if (json) {
    const err = /** @type {{ code?: string, message?: string }} */ (error);
    const info = interrupted ? { code: 'ABORTED', message: 'interrupted; current was not switched' } : { code: err?.code ?? 'ERROR', message: redact(String(err?.message ?? error)) };
    io.stdout.write(JSON.stringify({ error: info }) + '\n');
  }
  if (interrupted) return 130;
  const code = String(/** @type {{ code?: unknown }} */ (error)?.code ?? '');
  return code.startsWith('DEPLOY_SOURCE') || code === 'DEPLOY_UNSAFE_PATH' ? 1 : 2;
}
