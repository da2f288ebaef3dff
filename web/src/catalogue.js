// The algorithm catalogue as the server serves it (GET /v1/algorithms, docs/admin-api.md; the
// server's src/sluice/algorithm/catalogue.h): the console's one source for which algorithms
// exist, their fields in document order, which fields hold durations or choices, a new limit's
// values, the hints beside each field, and the words a limit reads as (words.js). Loaded once
// after signing in (main.jsx); every function takes the catalogue, the loaded one by default, so
// the unit tests pass their own (tests/unit/catalogue.test.js).
import { api } from './api.js';

let loaded = [];

export function setCatalogue(algorithms) {
  loaded = Array.isArray(algorithms) ? algorithms : [];
}

export function catalogue() {
  return loaded;
}

export async function loadCatalogue() {
  setCatalogue((await api('GET', '/v1/algorithms'))?.algorithms);
}

export function algorithmNames(algorithms = loaded) {
  return algorithms.map((a) => a.name);
}

export function algorithmOf(name, algorithms = loaded) {
  return algorithms.find((a) => a.name === name);
}

// The algorithm's parameters ({name, type, required, default?, choices?, example?, hint?}).
export function parametersOf(name, algorithms = loaded) {
  return algorithmOf(name, algorithms)?.parameters ?? [];
}

// Field names in document order.
export function fieldsOf(name, algorithms = loaded) {
  return parametersOf(name, algorithms).map((p) => p.name);
}

export function parameterOf(name, field, algorithms = loaded) {
  return parametersOf(name, algorithms).find((p) => p.name === field);
}

// A new limit of `name`: every field that has an example value.
export function newLimit(name, algorithms = loaded) {
  const limit = { algorithm: name };
  for (const p of parametersOf(name, algorithms)) {
    if (p.example !== undefined) limit[p.name] = p.example;
  }
  return limit;
}
