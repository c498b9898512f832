import { loadConfig } from '@herald/config';
import { invalidatorConfig, runInvalidator } from '@herald/delivery';

const config = loadConfig(invalidatorConfig, process.env);

await runInvalidator('web', config);
