/** In-memory simulations: the topology file, swarm-sim and scenarios (pure; the CLI does the IO). */
export { InputError, jsonPath } from './input-error.js';
export type { Loaded } from './input-error.js';
export { loadTopology, topologyFromValue, topologySchema, nodeProfileSchema, modelSpecSchema, TOPOLOGY_LIMITS } from './topology.js';
export type { Topology, TopologyOptions } from './topology.js';
export { runSwarmSim, swarmSimOptionIssue, newcomerOf } from './swarm-sim.js';
export type { SwarmSimOptions, SwarmSimReport, SimStep, SimError } from './swarm-sim.js';
export { loadScenario, runScenario, scenarioSchema, scenarioStepSchema, expectationSchema, SCENARIO_MAX_STEPS } from './scenario.js';
export type { Scenario, ScenarioFile, ScenarioStep, Expectation, ExpectationResult, StepResult, ScenarioResult } from './scenario.js';
export { machineChart, chartMermaid, chartMarkdown, chartedMachines } from './chart.js';
export type { MachineChart, ChartState, ChartTransition } from './chart.js';
export { renderHtmlReport } from './report-html.js';
export type { HtmlReportInput, ReportFrame } from './report-html.js';
export { runLoadSim, POLICIES, WORKLOADS, LOAD_SIM_LIMITS } from './load/index.js';
export type { LoadSimOptions, LoadSimResult, PolicyResult, WorkloadResult } from './load/index.js';
