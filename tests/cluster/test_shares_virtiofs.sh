#!/bin/bash
# cluster-timeout: 480
# test_shares.sh over virtiofs (vm.conf SharedDirTransport=virtiofs, issue
# 28): the same job script and the same boundaries, each share served by a
# Rust virtiofsd the prolog starts as the job user. Skipped where there is
# no Rust virtiofsd (Debian 12); the Debian 13 platform runs it.
SVM_SHARE_TRANSPORT=virtiofs exec "$(dirname "$0")/test_shares.sh"
