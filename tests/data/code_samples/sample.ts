import { Thing } from "./thing";

export interface Shape {
  area(): number;
}

export function makeSquare(side: number): Shape {
  return { area: () => side * side };
}

class Circle implements Shape {
  constructor(private r: number) {}
  area(): number {
    return Math.PI * this.r * this.r;
  }
}
