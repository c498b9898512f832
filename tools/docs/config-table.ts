/** Prints docs/configuration.md's tables from the services' config specs (one source of truth). */
import { describeConfig, type ConfigSpec } from '@herald/config';
import { apiConfig } from '../../apps/api/src/config.ts';
import { apnsPusherConfig } from '../../apps/apns-pusher/src/config.ts';
import { cliConfig } from '../../apps/cli/src/cli-config.ts';
import { demuxerConfig } from '../../apps/demuxer/src/config.ts';
import { fcmPusherConfig } from '../../apps/fcm-pusher/src/config.ts';
import { webPusherConfig } from '../../apps/web-pusher/src/config.ts';
import { monitorConfig } from '../../apps/monitor/src/config.ts';
import { registrarConfig } from '../../apps/registrar/src/config.ts';
import { sandboxConfig } from '../../apps/sandbox/src/config.ts';
import { fanoutConfig } from '../../apps/webhook-fanout/src/config.ts';
import { webhookPusherConfig } from '../../apps/webhook-pusher/src/config.ts';
import { commonConfig } from '@herald/config';
import { deschedulerConfig, invalidatorConfig, pusherConfig } from '@herald/delivery';

/** The variables of `spec` not in `base`, and those it reads with a default of its own (the webhook-pusher's PUSHER_PREFETCH). */
const only = (spec: ConfigSpec, base: ConfigSpec): ConfigSpec =>
  Object.fromEntries(Object.entries(spec).filter(([name, v]) => !(name in base) || base[name]?.default !== v.default));

const sections: Array<[string, ConfigSpec]> = [
  ['Every service', commonConfig],
  ['registrar', only(registrarConfig, commonConfig)],
  ['demuxer', only(demuxerConfig, commonConfig)],
  ['both pushers', only(pusherConfig, commonConfig)],
  ['apns-pusher', only(apnsPusherConfig, pusherConfig)],
  ['fcm-pusher', only(fcmPusherConfig, pusherConfig)],
  ['web-pusher (also releases scheduled web pushes)', only(webPusherConfig, pusherConfig)],
  ['apns-descheduler / fcm-descheduler', only(deschedulerConfig, commonConfig)],
  ['apns-invalidator / fcm-invalidator / web-invalidator', only(invalidatorConfig, commonConfig)],
  ['api', only(apiConfig, commonConfig)],
  ['webhook-fanout', only(fanoutConfig, commonConfig)],
  ['webhook-pusher (also reads the pushers\' PUSHER_*, LEDGER_* and RATE_LIMIT_* settings above)', only(webhookPusherConfig, pusherConfig)],
  ['monitor', { HTTP_PORT: monitorConfig.HTTP_PORT, HTTP_HOST: monitorConfig.HTTP_HOST, ...only(monitorConfig, commonConfig) }],
  ['sandbox', sandboxConfig],
  ['herald CLI', only(cliConfig, commonConfig)],
];
for (const [title, spec] of sections) {
  console.log(`\n**${title}**\n\n| variable | default | meaning |\n|---|---|---|\n${describeConfig(spec)}`);
}
