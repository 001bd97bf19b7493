# Copied from codec/avir/testdata/reference_check.py (the reference's checks,
# avir-protocol-v1.md sections 11.2 and 11.3, plus the component hashes
# recomputed with CPython's json) so that this package's tests run alone.
"""The reference's attestation checks, for cross-checking the Go package.

AttestationChain.verify and verify_signature follow avir-protocol-v1.md
sections 11.2 and 11.3 (what the avir-protocol package does). The
env_ok/results_ok fields recompute the component hashes the reference
itself never checks, with Python's own json module, so that the Go
canonical JSON is checked against CPython too.

stdin: a JSON list of attestation texts. stdout: a JSON list of
{"chain_ok", "signature_ok" (null when unsigned), "env_ok", "results_ok"}.
"""
import base64
import hashlib
import json
import sys

from cryptography.hazmat.primitives.asymmetric import ed25519


def canonical_hash(data):
    canonical = json.dumps(data, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(canonical.encode()).hexdigest()


def verify_chain(attestation):
    chain = attestation['attestation_chain']
    data = f"{chain['spec_hash']}{chain['env_hash']}{chain['results_hash']}{chain['timestamp']}"
    return chain['chain_hash'] == hashlib.sha256(data.encode()).hexdigest()


def verify_signature(attestation):
    sig_data = attestation.get('signature')
    if sig_data is None:
        return None
    chain_hash = attestation['attestation_chain']['chain_hash']
    try:
        public_key = ed25519.Ed25519PublicKey.from_public_bytes(base64.b64decode(sig_data['public_key']))
        public_key.verify(base64.b64decode(sig_data['signature']), chain_hash.encode())
        return True
    except Exception:
        return False


def check(text):
    att = json.loads(text)
    env = att['environment']
    env_dict = {
        'container': env.get('container'), 'os': env.get('os'), 'arch': env.get('arch'),
        'python_version': env.get('python_version'),
        'resources': {'cpu_cores': env['resources'].get('cpu_cores'), 'memory_gb': env['resources'].get('memory_gb')},
    }
    system = att['system']
    results = {'suite': f"{system['name']} v{system['version']}", 'verdicts': att['results']['benchmarks']}
    chain = att['attestation_chain']
    return {
        'chain_ok': verify_chain(att),
        'signature_ok': verify_signature(att),
        'env_ok': canonical_hash(env_dict) == chain['env_hash'],
        'results_ok': canonical_hash(results) == chain['results_hash'],
    }


json.dump([check(t) for t in json.load(sys.stdin)], sys.stdout)
