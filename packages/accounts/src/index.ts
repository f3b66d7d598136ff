export * from './bootstrap';
export * from './keys';
export * from './projects';
export * from './replay-settings';
export * from './personal-key-auth';
