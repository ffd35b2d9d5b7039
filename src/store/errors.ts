/** Errors the store layer throws; the HTTP layers map them once. */

/** Input the store refuses; `field` names the offending form field. */
export class ValidationError extends Error {
  constructor(readonly field: string, message: string) {
    super(message);
    this.name = "ValidationError";
  }
}

/** The record to change does not exist. */
export class NotFoundError extends Error {
  constructor(message = "not found") {
    super(message);
    this.name = "NotFoundError";
  }
}

/** An atomic commit kept conflicting after every retry. */
export class ConflictError extends Error {
  constructor(message = "the write kept conflicting; try again") {
    super(message);
    this.name = "ConflictError";
  }
}
