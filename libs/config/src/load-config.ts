import type { VarSpec } from './vars.ts';

export type ConfigSpec = Record<string, VarSpec<unknown>>;
export type ConfigOf<S extends ConfigSpec> = { readonly [K in keyof S]: S[K] extends VarSpec<infer T> ? T : never };

/** Every bad variable at once, each with its name, so an operator fixes them in one go. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Validate the environment once, at start-up, into a frozen typed object. */
/** Problems between variables once each is valid on its own (one must outlast another), each naming both. */
export type CrossCheck<S extends ConfigSpec> = (config: ConfigOf<S>) => readonly string[];

export function loadConfig<S extends ConfigSpec>(spec: S, env: NodeJS.ProcessEnv, check?: CrossCheck<S>): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const [name, v] of Object.entries(spec)) {
    const fromAlias = v.alias === undefined ? undefined : env[v.alias];
    const raw = fromAlias ?? env[name] ?? v.default;
    const shownName = fromAlias === undefined ? name : v.alias;
    if (raw === undefined) {
      problems.push(`${name} is required: ${v.description}`);
      continue;
    }
    try {
      out[name] = v.parse(raw);
      const tooLong = name.endsWith('_MS') && v.comparedOnly !== true ? timerOverflow(out[name]) : undefined;
      if (tooLong !== undefined) problems.push(`${shownName} ${tooLong}`);
    } catch (err) {
      // A secret's value is never echoed, whatever its parser's message says.
      const message = (err as Error).message;
      problems.push(`${shownName} ${v.secret === true && raw.length > 0 ? message.replaceAll(raw, '***') : message}`);
    }
  }
  if (problems.length === 0 && check !== undefined) problems.push(...check(out as ConfigOf<S>));
  if (problems.length > 0) throw new ConfigError(problems);
  return Object.freeze(out) as ConfigOf<S>;
}

/** The longest delay Node's timers keep (2^31 − 1 ms, about 24.8 days): a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647;

/**
 * Why a duration in ms (a variable named *_MS: a number or a list of them) cannot be one: such a
 * setting ends in a timer somewhere unless its spec says it is only compared (comparedOnly), and
 * Node runs a timer set past MAX_TIMER_MS after 1 ms (JOB_PRUNE_INTERVAL_MS=2592000000, "monthly",
 * pruned without a pause).
 */
function timerOverflow(value: unknown): string | undefined {
  const over = (Array.isArray(value) ? value : [value]).find((n) => typeof n === 'number' && n > MAX_TIMER_MS);
  return over === undefined ? undefined : `must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest delay Node's timers keep), got ${String(over)}`;
}

/** The problems loadConfig would throw for this environment (none: []), each naming its variable. */
export function configProblems(spec: ConfigSpec, env: NodeJS.ProcessEnv): readonly string[] {
  try {
    loadConfig(spec, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

/**
 * loadConfig for a program's entry point: a bad variable ends the process with exit code 1 after
 * writing the problems, and only them, to stderr (a message that short goes whole into an empty
 * pipe before exit). Left uncaught, a ConfigError comes with a source line and a stack trace
 * that say nothing to an operator, and was cut off once (infra/local/build-services.ts, lineLimit).
 */
export function loadConfigOrExit<S extends ConfigSpec>(spec: S, env: NodeJS.ProcessEnv = process.env, check?: CrossCheck<S>): ConfigOf<S> {
  try {
    return loadConfig(spec, env, check);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    return process.exit(1);
  }
}

/** Markdown table rows for docs/configuration.md. */
export function describeConfig(spec: ConfigSpec): string {
  return Object.entries(spec)
    .map(([name, v]) => `| \`${name}\`${v.alias === undefined ? '' : ` (or \`${v.alias}\`)`} | ${v.default === undefined ? '(required)' : v.default === '' ? '(unset)' : `\`${v.default}\``} | ${v.description} |`)
    .join('\n');
}
