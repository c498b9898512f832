import { loadConfigOrExit } from '@herald/config';
import { deschedulerConfig, runDescheduler } from '@herald/delivery';

const config = loadConfigOrExit(deschedulerConfig);

await runDescheduler('apns', config);
