"""Train a ResNet-50 on ImageFolder data with DDP and fp16 AMP (a typical GPU script)."""

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler
import torchvision
import torchvision.transforms as T


def build_loader(root, batch_size, rank, world_size):
    transform = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor()])
    dataset = torchvision.datasets.ImageFolder(root, transform=transform)
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        num_workers=8,
        pin_memory=True,
    )
    return loader, sampler


def train(local_rank, args):
    os.environ["MASTER_ADDR"] = "localhost"
    os.environ["MASTER_PORT"] = "12355"
    dist.init_process_group("nccl", rank=local_rank, world_size=args.world_size)
    torch.cuda.set_device(local_rank)
    torch.backends.cudnn.benchmark = True

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = torchvision.models.resnet50(num_classes=1000).cuda()
    model = DDP(model, device_ids=[local_rank], output_device=local_rank)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    scaler = torch.cuda.amp.GradScaler()

    train_loader, sampler = build_loader(args.data, args.batch_size, local_rank, args.world_size)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        model.train()
        running_loss = 0.0
        for step, (images, labels) in enumerate(train_loader):
            images = images.cuda(non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            optimizer.zero_grad()
            with torch.cuda.amp.autocast():
                outputs = model(images)
                loss = criterion(outputs, labels)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            running_loss += loss.item()
            if step % 100 == 0:
                print(f"epoch {epoch} step {step} loss {running_loss / (step + 1):.4f}")
        scheduler.step()
        if local_rank == 0:
            torch.save(model.module.state_dict(), f"resnet50_epoch{epoch}.pt")
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/data/imagenet/train")
    parser.add_argument("--epochs", type=int, default=90)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    args.world_size = torch.cuda.device_count()
    mp.spawn(train, args=(args,), nprocs=args.world_size)


if __name__ == "__main__":
    main()
