import { readFile } from "fs";

function parseLine(line) {
  return line.split(",");
}

class Reader {
  readAll(text) {
    return text.split("\n").map(parseLine);
  }
}
