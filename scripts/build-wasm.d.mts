/** Types of scripts/build-wasm.mjs, for the test that imports it. */
export declare function builtKernels(): Promise<string>;
