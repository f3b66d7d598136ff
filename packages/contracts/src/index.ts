export * from './validate';
export * from './capture';
export * from './captured-event';
