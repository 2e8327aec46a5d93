// parent-watch.mjs has only side effects (it starts the watch when loaded).
export {};
