/** Types for parent-watch.mjs (plain JavaScript: the services load it without a TypeScript loader). */
export declare const PARENT_POLL_MS: number;
/** The current parent pid, read fresh from /proc/self/stat; undefined where there is no /proc. */
export declare function currentParentPid(): number | undefined;
/** Call `onGone` once when `parentPid` stops being this process's parent; returns a function that stops watching. */
export declare function watchParent(parentPid: number, onGone: () => void, pollMs?: number): () => void;
