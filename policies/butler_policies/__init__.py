"""The risk policies butler ships, registered under the ``butler.policies`` entry points."""
