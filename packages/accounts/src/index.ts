export * from './bootstrap';
export * from './keys';
