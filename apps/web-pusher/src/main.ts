import { loadConfigOrExit } from '@herald/config';
import { capRequestTimeout, nowMs, runPusher, startInProcessDescheduler } from '@herald/delivery';
import { createWebPushProvider } from '@herald/providers';
import { subjectWarning, webPusherConfig } from './config.ts';
import { webSettings } from './web-settings.ts';

const config = loadConfigOrExit(webPusherConfig);

await runPusher(
  'web',
  config,
  async (logger, limits) => {
    const settings = capRequestTimeout(await webSettings(config), limits, logger);
    const subjectProblem = subjectWarning(config.WEB_PUSH_VAPID_SUBJECT);
    if (subjectProblem !== undefined) {
      logger.error({ subject: config.WEB_PUSH_VAPID_SUBJECT }, `WEB_PUSH_VAPID_SUBJECT ${subjectProblem}: Safari's pushes signed with it will be refused; set a public mailto: or https: contact`);
    }
    logger.info(
      {
        vapid: settings.processVapid?.current.publicKey ?? 'none (apps without their own keys park as no-vapid-keys)',
        sandbox: settings.trusted?.map((t) => `${t.host}:${t.port}`) ?? [],
        proxy: settings.proxy && `${settings.proxy.host}:${settings.proxy.port}`,
      },
      'Web Push settings',
    );
    return createWebPushProvider(settings, logger, nowMs(limits.now));
  },
  // Scheduled web pushes are released here, not by a web-descheduler (SKIP LOCKED keeps N pushers apart).
  (parts) => startInProcessDescheduler('web', config, parts),
);
