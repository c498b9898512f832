import { loadConfig } from '@herald/config';
import { deschedulerConfig, runDescheduler } from '@herald/delivery';

const config = loadConfig(deschedulerConfig, process.env);

await runDescheduler('fcm', config);
