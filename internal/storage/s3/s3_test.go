package s3_test

import (
	"testing"

	"github.com/techlearningpro/engagement/internal/storage"
	"github.com/techlearningpro/engagement/internal/storage/s3/s3test"
	"github.com/techlearningpro/engagement/internal/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Bucket { return s3test.Bucket(t) })
}
