// The scenarios here import ./lib.mjs as they will once moved up to js/;
// this lets one be tried where it is: SUPERSTEP_URL=… node --test pending/x.test.mjs
export * from "../lib.mjs";
