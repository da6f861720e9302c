// asl-validator over many definitions in one Node.js run, its schemas compiled once.
//
// asl-validator 4's validator builds a new Ajv, and compiles its fifteen schemas into it, for every
// definition (about 0.1 s each); over the two hundred definitions of a test run that is most of its cost.
// Here every `new Ajv` it makes returns the first one, so the compiled schemas are reused. Its formats are
// pure functions it registers again on each call; ajv-formats' keywords, which Ajv refuses to define twice,
// are registered once. The checks themselves are asl-validator's own, unchanged.
//
// Usage: node asl_validator.js PATH... ; prints "✓ PATH" for a valid definition and "PATH: [errors]" for
// another, and exits with 1 if any is invalid (as asl-validator's own command does).
"use strict";
const fs = require("fs");
const path = require("path");

const validatorPath = require.resolve("asl-validator/dist/src/validator.js");
const ajvModule = require(require.resolve("ajv", { paths: [path.dirname(validatorPath)] }));
const Ajv = ajvModule.default;
let shared = null;
ajvModule.default = function SharedAjv(options) {
  if (shared === null) {
    shared = new Ajv(options);
    const addKeyword = shared.addKeyword.bind(shared);
    shared.addKeyword = (definition, ...rest) => {
      const names = [].concat(typeof definition === "string" ? definition : definition.keyword);
      return names.every((name) => shared.getKeyword(name)) ? shared : addKeyword(definition, ...rest);
    };
  }
  return shared;
};
const validator = require(validatorPath);

let invalid = 0;
for (const file of process.argv.slice(2)) {
  const result = validator(JSON.parse(fs.readFileSync(file, "utf8")));
  if (result.isValid) {
    console.log(`✓ ${file}`);
  } else {
    invalid += 1;
    console.log(`${file}: ${JSON.stringify(result.errors)}`);
  }
}
process.exitCode = invalid ? 1 : 0;
