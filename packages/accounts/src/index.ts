export * from './bootstrap';
export * from './keys';
export * from './projects';
