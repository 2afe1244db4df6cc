/** Types of scripts/provision.mjs, for the tests that import it. */
export interface Requirement {
  readonly name: string;
  readonly env: string;
  readonly binaries: readonly string[];
  readonly places: readonly string[];
  readonly install: readonly string[];
}
export declare const REQUIREMENTS: readonly Requirement[];
export declare function locate(req: Requirement, env: NodeJS.ProcessEnv): string | undefined;
export declare function provision(
  requirements: readonly Requirement[],
  options?: { env?: NodeJS.ProcessEnv; cwd?: string; log?: (line: string) => void },
): NodeJS.ProcessEnv;
export declare const NODE_LLAMA_CPP_VERSION: string;
export declare const NODE_LLAMA_CPP_DIR: string;
