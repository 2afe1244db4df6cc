/**
 * `hecate-swarm/sim`: in-memory simulations and their inputs and outputs — the topology file
 * loader, swarm-sim, scenarios, the statechart charts, the HTML report and the load simulator.
 * Pure (the CLI does the IO). This entry loads zod for the file schemas; the root entry does not.
 * @packageDocumentation
 */
export { InputError, jsonPath } from './input-error.js';
export type { Loaded } from './input-error.js';
export { loadTopology, topologyFromValue, topologySchema, nodeProfileSchema, modelSpecSchema, TOPOLOGY_LIMITS } from './topology.js';
export type { Topology, TopologyOptions } from './topology.js';
export { runSwarmSim, swarmSimOptionIssue, newcomerOf } from './swarm-sim.js';
export type { SwarmSimOptions, SwarmSimReport, SimStep, SimError, SimCopy } from './swarm-sim.js';
export { loadScenario, runScenario, scenarioSchema, scenarioStepSchema, expectationSchema, SCENARIO_MAX_STEPS } from './scenario.js';
export type { Scenario, ScenarioFile, ScenarioStep, Expectation, ExpectationResult, StepResult, ScenarioResult } from './scenario.js';
export { machineChart, chartMermaid, chartMarkdown, chartedMachines } from './chart.js';
export type { MachineChart, ChartState, ChartTransition } from './chart.js';
export { renderHtmlReport } from './report-html.js';
export type { HtmlReportInput, ReportFrame } from './report-html.js';
export { runLoadSim, POLICIES, WORKLOADS, LOAD_SIM_LIMITS } from './load/index.js';
export type { LoadSimOptions, LoadSimResult, PolicyResult, WorkloadResult } from './load/index.js';
export { runSessionSim, sessionTable } from './load/index.js';
export type { SessionSimOptions, SessionSimResult, W6Figures, W6Strategy } from './load/index.js';
