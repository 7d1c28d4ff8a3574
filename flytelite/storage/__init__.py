from flytelite.storage.blobstore import BlobStore

__all__ = ["BlobStore"]
