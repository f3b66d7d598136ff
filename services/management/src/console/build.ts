/** `node services/management/dist/console/build.js`: builds the console beside the compiled service. */
import { buildConsole, BUILT_CONSOLE_DIR } from './assets';

buildConsole(BUILT_CONSOLE_DIR).catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
