import {
  bool,
  commonConfig,
  loadConfig,
  pushPackConfig,
  scheduleHorizonConfig,
  optionalBearerKey,
  str,
  url,
  urlList,
  type ConfigOf,
  type VarSpec,
} from '@herald/config';
import { parseThresholds, type ThresholdConfig } from '@herald/monitoring';

export const cliConfig = {
  AMQP_URL: commonConfig.AMQP_URL,
  DATABASE_URL: commonConfig.DATABASE_URL,
  DATABASE_SCHEMA: commonConfig.DATABASE_SCHEMA,
  PUSH_PACK_SIZE: pushPackConfig.PUSH_PACK_SIZE,
  SCHEDULE_HORIZON_DAYS: scheduleHorizonConfig.SCHEDULE_HORIZON_DAYS,
  RABBITMQ_API_URL: urlList(
    ['http', 'https'],
    'RabbitMQ management API (for `herald status`); in a cluster, a comma-separated list of each node’s API',
    {
      default: 'http://guest:guest@127.0.0.1:15672/api',
    },
  ),
  MONITOR_URL: {
    description: 'The monitor (dashboard and /api/status) that `herald status` asks first, with HERALD_OPERATOR_KEY',
    default: 'http://127.0.0.1:9470',
    parse: (raw) => {
      const checked = url(['http', 'https'], '').parse(raw);
      const { username, password } = new URL(checked);
      // fetch refuses such a URL, and status printed it whole in its note.
      if (username !== '' || password !== '')
        throw new Error('must not carry a user or password: the monitor is asked with HERALD_OPERATOR_KEY');
      return checked;
    },
  } satisfies VarSpec<string>,
  HERALD_OPERATOR_KEY: optionalBearerKey(
    'Operator key `herald status` shows the monitor (its /api needs one); unset: status is computed from RabbitMQ',
    { secret: true },
  ),
  MONITOR_THRESHOLDS: {
    description: "Alarm thresholds `herald status` applies when the monitor is not reachable (same JSON as the monitor's)",
    default: '{}',
    parse: parseThresholds,
  } satisfies VarSpec<ThresholdConfig>,
  HERALD_DEBUG: bool("Print where a failure arose (its stack and its causes') after the line of words on stderr", {
    default: 'false',
  }),
  SANDBOX_STATE_DIR: str('Where the sandbox writes sandbox.json (for `herald sandbox records`)', { default: '.herald/sandbox' }),
} as const;
export type CliConfig = ConfigOf<typeof cliConfig>;

export const readCliConfig = (): CliConfig => loadConfig(cliConfig, process.env);
