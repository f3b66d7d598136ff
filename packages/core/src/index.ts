export * from './dir-lock';
export * from './durable-files';
export * from './errors';
export * from './ids';
export * from './logger';
export * from './token-buckets';
export * from './time';
export * from './timeout';
