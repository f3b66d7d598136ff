/** `node services/management/dist/replay-player/build.js`: writes the player's bundle beside the compiled service. */
import { writePlayer } from './assets';

writePlayer().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
