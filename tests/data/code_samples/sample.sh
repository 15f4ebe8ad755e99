#!/usr/bin/env bash
set -euo pipefail

deploy() {
  echo "deploying $1"
}

deploy production
