export * from './errors';
export * from './health';
export * from './server';
export * from './app';
export * from './cors';
export * from './payload';
export * from './fast';
export * from './body';
