export * from './validate';
export * from './capture';
export * from './captured-event';
export * from './json-depth';
export * from './identifiers';
export * from './replay';
export * from './capture-v1';
export * from './logs';
