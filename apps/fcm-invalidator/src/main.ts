import { loadConfigOrExit } from '@herald/config';
import { invalidatorConfig, runInvalidator } from '@herald/delivery';

const config = loadConfigOrExit(invalidatorConfig);

await runInvalidator('fcm', config);
